"""Grade a class the way programming judges do: each submission runs in a sandbox that sees
only that submission and a copy of ``helpers`` without the answer keys; what comes back is
data (numbers and arrays, never pickled objects); the scoring runs outside, with the
book's own checkers and their specific diagnoses.

* :mod:`tools.judge.wire`: the data format a sandbox answers in, and its limits;
* :mod:`tools.judge.sandbox`: the sandbox (bubblewrap) and its limits on time, memory,
  processes and output;
* :mod:`tools.judge.worker`: what runs inside it: the student's own cells, then calls;
* :mod:`tools.judge.keyfree`: the copy of ``helpers`` the sandbox imports, the answer keys
  replaced by functions that raise;
* :mod:`tools.judge.cells`: what a student's cells define, and where an exercise's cells lie
  in a hand-in;
* :mod:`tools.judge.proxy`: a student's sandbox, and a stand-in for each of their functions
  that calls it there;
* :mod:`tools.judge.scorer`: the book's notebook run once, trusted, each exercise's checker
  called for every student against that student's sandbox.
"""
