"""The course's build and check tools: run them from the repository root as ``python -m tools.NAME``
(the Makefile's targets do). Not part of the ``helpers`` package a student installs."""
