"""The judge's parts (tools/judge): the data a sandbox answers in, the key-free helpers, and
how a student's cells become what the sandbox runs. The whole, a class graded in sandboxes,
is tests/test_classroom.py's."""

from __future__ import annotations

import inspect
import io
import json
import shutil
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch

from tools.judge import cells, keyfree, proxy, scorer, wire
from tools.toc import ROOT


def test_the_wire_carries_numbers_arrays_and_containers_and_nothing_else():
    value = {0.1: [1, 2.5, None, "a"], "t": torch.arange(3.0), "a": np.eye(2, dtype=np.float32), 3: (True, np.int64(4)),
             "nan": float("nan")}
    back = wire.decode(json.loads(json.dumps(wire.encode(value))))
    assert back[0.1] == [1, 2.5, None, "a"] and back[3] == (True, 4) and np.isnan(back["nan"])
    assert torch.equal(back["t"], torch.arange(3.0)) and back["a"].dtype == np.float32
    odd = wire.decode(wire.encode(object()))
    assert isinstance(odd, wire.Unreadable) and odd != odd and type(odd).__name__ == "object"
    assert isinstance(wire.decode(wire.encode(np.array([object()]))), wire.Unreadable)


@pytest.mark.parametrize("doc", [
    {"pickle": "x"}, [1, 2], {"list": 3}, {"dict": [[{"list": []}, 1]]},
    {"array": "not base64!"}, {"float": "1e400"}, {"a": 1, "b": 2},
])
def test_the_wire_refuses_what_is_not_its_format(doc):
    with pytest.raises(wire.WireError):
        wire.decode(doc)


def test_the_wire_never_unpickles_an_array():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    import base64

    with pytest.raises(wire.WireError, match="not an array"):
        wire.decode({"array": base64.b64encode(buffer.getvalue()).decode()})
    deep = 0
    for _ in range(wire.MAX_DEPTH + 2):
        deep = {"list": [deep]}
    with pytest.raises(wire.WireError, match="deeper"):
        wire.decode(deep)


def test_a_message_longer_than_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(wire, "MAX_BYTES", 100)
    with pytest.raises(wire.WireError, match="longer"):
        wire.write_message(io.BytesIO(), "x" * 200)
    frame = io.BytesIO(wire.HEADER.pack(10_000) + b"{}")
    with pytest.raises(wire.WireError, match="longer"):
        wire.read_message(frame)
    stream = io.BytesIO()
    wire.write_message(stream, {"ok": [1]})
    stream.seek(0)
    assert wire.read_message(stream) == {"ok": [1]}


def test_the_keys_of_a_checker_are_its_off_limits_functions():
    import helpers.grading as grading
    from helpers.measure.backprop import backprop_by_hand
    from helpers.models.transformer import apply_deepnorm_, deepnorm_constants

    assert backprop_by_hand in keyfree.references(grading.check_residual_backprop)
    keys = set(keyfree.references(grading.check_deepnorm))
    assert {inspect.unwrap(apply_deepnorm_), inspect.unwrap(deepnorm_constants)} <= keys
    assert "layer_norm" in keyfree.library_names(keyfree.references(grading.check_layer_norm))
    with pytest.raises(TypeError, match="checker must be a function"):
        keyfree.references(3)


def test_the_key_free_helpers_has_no_checkers_and_its_keys_raise(tmp_path):
    import helpers.grading as grading

    refs = [f for name in grading.__all__ if name.startswith("check_")
            for f in keyfree.references(getattr(grading, name))]
    lib = keyfree.build(refs, tmp_path)
    assert not (lib / "helpers" / "grading").exists()
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "import helpers.measure.backprop as b, helpers.measure.gradients as g, helpers.models.transformer as t\n"
            "import numpy as np\n"
            "for f, args in ((b.backprop_by_hand, (None,) * 6), (g.per_layer_factor, (np.ones(3),)),"
            " (t.deepnorm_constants, (4,))):\n"
            "    try:\n        f(*args)\n    except RuntimeError as e:\n        print(e)\n")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code, str(lib)], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout.splitlines()
    assert out[:3] == [keyfree.MESSAGE.format(name=n) for n in ("backprop_by_hand", "per_layer_factor",
                                                                  "deepnorm_constants")]


def test_a_key_its_module_does_not_define_is_an_error(tmp_path):
    package = tmp_path / "pkg" / "helpers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "measure.py").write_text("def other():\n    return 1\n")

    def ghost():
        pass

    ghost.__module__, ghost.__qualname__ = "helpers.measure", "ghost"
    with pytest.raises(ValueError, match="does not define"):
        keyfree.build([ghost], tmp_path / "out", package)


def test_a_students_cells_are_read_without_running_them(tmp_path):
    assert cells.defined_names("import os\ndef f(x):\n    return x\nmy_a, (my_b, c) = 1, (2, 3)\nclass K: pass") \
        == ["f", "my_a", "my_b", "c", "K"]
    assert cells.defined_names("def (") == []
    marker = tmp_path / "ran"
    source = (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('top')\n"
              f"@print\ndef f(x=pathlib.Path({str(marker)!r}).write_text('default')) -> print('annotation'):\n"
              "    return x + 1\n")
    fn = proxy.shadow(source, "<cell ex.0>", "f")
    assert not marker.exists(), "compiling the student's function ran some of their code"
    assert fn.__name__ == "f" and fn.__code__.co_firstlineno == 4 and fn(1) == 2
    assert "return x + 1" in inspect.getsource(fn)


def test_a_books_cell_gives_the_sandbox_its_imports_definitions_and_constants():
    source = "%matplotlib inline\nimport numpy as np\nSEED = 0\nruns = train(SEED)\ndef f():\n    return runs\n"
    kept = cells.setup_source(source)
    assert "import numpy as np" in kept and "SEED = 0" in kept and "def f" in kept and "train" not in kept
    assert cells.setup_source("train()") == "" and cells.setup_source("def (") == ""


def test_hidden_cases_are_seeded_by_class_and_exercise():
    assert scorer.hidden_seed(1, "ex-a") == scorer.hidden_seed(1, "ex-a")
    assert len({scorer.hidden_seed(1, "ex-a"), scorer.hidden_seed(2, "ex-a"), scorer.hidden_seed(1, "ex-b")}) == 3
    import helpers.grading.chapter1 as chapter1

    with scorer.seeded_hidden_cases(7):
        first = chapter1._rng().random()
    with scorer.seeded_hidden_cases(7):
        assert chapter1._rng().random() == first


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_sandbox_sees_no_book_and_no_network_and_answers_as_data(tmp_path, monkeypatch):
    from tools.judge.sandbox import Sandbox, SandboxError

    monkeypatch.setenv("INSTRUCTORS_TOKEN", "secret-4711")  # in the grader's environment, never the sandbox's
    lib = keyfree.build([], tmp_path)
    with Sandbox(lib) as box:
        group = box.group  # its pids cgroup, where the machine lets the grader make one
        setup = box.ask({"op": "setup", "seconds": 5, "cells": [("<cell e.0>", (
            "import os, socket\n"
            "def look():\n    return sorted(os.listdir('/'))\n"
            "def net():\n    socket.create_connection(('1.1.1.1', 80), timeout=2)\n"
            "def same(a):\n    a += 1\n    return a\n"
            "def evil():\n    import pickle\n    return pickle.dumps(1)\n"
            "def host():\n    seen = [repr(dict(os.environ))]\n"
            "    for name in ('/proc/1/environ', '/proc/self/environ', '/proc/self/mountinfo', '/proc/mounts'):\n"
            "        try:\n            seen.append(open(name, 'rb').read().decode(errors='replace'))\n"
            "        except OSError:\n            pass\n"
            "    return '\\n'.join(seen)\n"))]}, 60)
        assert setup == {"errors": {}}
        host = wire.decode(box.ask({"op": "call", "name": "host", "args": (), "kwargs": {}, "time_limit": 5},
                                   30)["result"]["value"])
        assert "secret-4711" not in host, "the grader's environment leaked into the sandbox"
        assert str(ROOT) not in host and str(tmp_path) not in host, "the sandbox shows host paths"
        seen = wire.decode(box.ask({"op": "call", "name": "look", "args": (), "kwargs": {}, "time_limit": 5},
                                   30)["result"]["value"])
        assert "work" not in seen and "home" not in seen and "judge" in seen
        raised = box.ask({"op": "call", "name": "net", "args": (), "kwargs": {}, "time_limit": 5}, 30)["raised"]
        assert raised["type"] in {"OSError", "TimeoutError", "gaierror"} and raised["where"]["line"] == 5
        answer = box.ask({"op": "call", "name": "same", "args": (np.zeros(2),), "kwargs": {}, "time_limit": 5}, 30)
        assert answer["result"] == {"arg": 0} and wire.decode(answer["args"][0]["value"]).tolist() == [1, 1]
        pickled = box.ask({"op": "call", "name": "evil", "args": (), "kwargs": {}, "time_limit": 5}, 30)
        assert isinstance(wire.decode(pickled["result"]["value"]), wire.Unreadable), "bytes are not data"
    with pytest.raises(SandboxError, match="stopped"):
        box.ask({"op": "values", "names": []}, 5)
    assert box.group is None and not (group is not None and group.exists()), "a cgroup was left behind"


def test_what_a_call_left_in_its_arguments_is_written_back_into_the_checkers_copies():
    """The sandbox sends each argument back as the student's call left it; models come back
    as their parameters and number attributes, lists of models element by element, and
    nothing that is not data replaces what the checker holds."""
    import sys as _sys

    _sys.path.insert(0, str(Path(scorer.__file__).parent))
    import worker  # tools/judge/worker.py, as the sandbox runs it

    layers = [torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)]
    mine = [torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)]
    with torch.no_grad():
        for layer in layers:
            layer.weight.mul_(2)
    layers[1].alpha = 3.0
    mine[1].alpha = 1.0
    state = json.loads(json.dumps(worker._state(layers, wire, torch)))
    proxy.write_back(mine, state)
    assert all(torch.equal(a.weight, b.weight) for a, b in zip(layers, mine)) and mine[1].alpha == 3.0
    assert all(isinstance(m, torch.nn.Linear) for m in mine), "a list of models stays a list of models"

    array, table = np.zeros(3), {"a": [1, 2], "b": 0.5}
    proxy.write_back(array, json.loads(json.dumps(worker._state(np.arange(3.0), wire, torch))))
    proxy.write_back(table, json.loads(json.dumps(worker._state({"a": [1, 2, 3]}, wire, torch))))
    assert array.tolist() == [0, 1, 2] and table == {"a": [1, 2, 3]}
    odd = [1, 2]
    proxy.write_back(odd, {"items": [{"value": {"unreadable": "generator"}}, {"value": 5}]})
    assert odd == [1, 5], "an element the grader cannot read is left as the checker had it"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_sandbox_cannot_start_more_than_its_share_of_processes(tmp_path):
    from tools.judge.sandbox import MAX_PROCESSES, Sandbox, process_cap

    group = process_cap()
    if group is None:
        pytest.skip("this machine does not let the grader make a pids cgroup")
    group.rmdir()
    lib = keyfree.build([], tmp_path)
    bomb = ("import subprocess\nps = []\ntry:\n    for _ in range(4 * MAX):\n"
            "        ps.append(subprocess.Popen(['sleep', '30']))\nexcept OSError:\n    pass\nn = len(ps)\n")
    with Sandbox(lib) as box:
        assert box.ask({"op": "setup", "seconds": 20, "cells": [("<cell e.0>", f"MAX = {MAX_PROCESSES}\n" + bomb)]},
                       60) == {"errors": {}}
        started = wire.decode(box.ask({"op": "values", "names": ["n"]}, 10)["n"]["value"])
    assert 0 < started < MAX_PROCESSES


def test_only_the_cells_a_checker_reads_from_run_before_it():
    sources = [
        "import helpers\nimport numpy as np\nSEED = 0",            # 0: names everyone reads
        "data = helpers.data.load(SEED)",                         # 1: read by the checker, through runs
        "slow = helpers.train_everything(data)",                  # 2: nobody reads it
        None,                                                     # 3: markdown
        "runs = {}\nruns['a'] = helpers.train(data)",             # 4: defines runs
        "runs.update(b=helpers.train(data))",                     # 5: changes runs
        "helpers.seed(SEED)",                                     # 6: global state: always runs
        "np.mean(slow)",                                          # 7: reads slow, writes nothing read later
        "helpers.grading.check_x(runs['a'], my_guess)",           # 8: the checker
    ]
    assert cells.cells_needed(sources, [8]) == {0, 1, 4, 5, 6, 8}
    reads, writes = cells.reads_and_writes("x[0] = y\nz.attr = 1\nnp.save(f, w)\nfor k in range(3):\n    pass")
    assert {"x", "z", "k"} <= writes and "np" not in writes and {"y", "f", "w"} <= reads
    assert cells.reads_and_writes("def (") == ({"*"}, {"*"})


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_sandbox_writes_only_to_its_sized_tmpfs_and_its_memory_is_capped_as_a_whole(tmp_path):
    """The root is read-only (before, 300 MiB went to ``/``), ``/dev/shm`` is a small tmpfs of its
    own (before, 300 MiB went there, counted against the host's memory), and the sandbox's
    memory is capped as a whole by a cgroup, not per process: 2.5 GiB in one process, far
    under the per-process address-space limit, stops the sandbox, saying why."""
    from tools.judge.sandbox import SANDBOX_MEMORY_BYTES, SHM_BYTES, Sandbox, SandboxError, memory_cap

    lib = keyfree.build([], tmp_path)
    with Sandbox(lib) as box:
        assert box.ask({"op": "setup", "seconds": 20, "cells": [("<cell e.0>", (
            "import numpy as np\n"
            "def write(path, mib):\n    try:\n        with open(path, 'wb') as f:\n"
            "            for _ in range(mib):\n                f.write(bytes(2**20))\n        return 'written'\n"
            "    except OSError as err:\n        return type(err).__name__\n"
            "def hog(gib):\n    a = np.ones(int(gib * 2**30 / 8))\n    return float(a.sum())\n"))]},
                       60) == {"errors": {}}

        def call(name, *args):
            answer = box.ask({"op": "call", "name": name, "args": args, "kwargs": {}, "time_limit": 30}, 60)
            return wire.decode(answer["result"]["value"])

        assert call("write", "/tmp/ok", 1) == "written"
        assert call("write", "/x", 1) == "OSError", "the root must be read-only"
        assert call("write", "/dev/shm/x", 2 * SHM_BYTES // 2**20) == "OSError", "/dev/shm must be small"
        group = memory_cap()
        if group is None:
            pytest.skip("this machine does not let the grader make a memory cgroup")
        group.rmdir()
        with pytest.raises(SandboxError, match="ran out of memory"):
            call("hog", 1.25 * SANDBOX_MEMORY_BYTES / 2**30)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_setup_of_a_students_cells_has_one_wall_clock_budget_whatever_their_number(monkeypatch, tmp_path):
    """A cell that blocks the sandbox's own alarm and sleeps is stopped by the grader's clock,
    whose budget does not grow with the number of (empty) cells, and the student is flagged.
    (The budget's grace for starting a sandbox is cut from 30 s to 5, or the test waits twice 32 s.)"""
    from tools.judge import proxy
    from tools.judge.proxy import Student

    monkeypatch.setattr(proxy, "SETUP_GRACE_SECONDS", 5.0)
    lib = keyfree.build([], tmp_path)
    stall = "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\ntime.sleep(600)\n"
    cells = {"<cell ex.0>": stall, **{f"<cell ex.{k}>": "" for k in range(1, 40)}}
    student = Student("s", cells, lib, cell_seconds=1)
    assert student.setup_seconds == Student("t", {}, lib, cell_seconds=1).setup_seconds
    started = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017 (the sandbox's error, after the grader's clock)
        student.ready(["f"], "ex")
    took = time.monotonic() - started
    student.close()
    assert took < 2 * student.setup_seconds + 20, f"the setup held the grader for {took:.0f} s"
    assert any("hit a limit" in note for note in student.notes), student.notes


def test_a_scorer_keeps_a_bounded_number_of_sandboxes_alive_whatever_the_class_size(monkeypatch, tmp_path):
    """Memory must not grow with the class: past MAX_LIVE sandboxes, the one used least recently
    is closed, and it starts again (its cells run anew) when its student is next checked."""
    from tools.judge import proxy

    alive, most = set(), [0]

    class FakeSandbox:
        def __init__(self, lib):
            alive.add(self)
            most[0] = max(most[0], len(alive))
            self.process = type("P", (), {"poll": staticmethod(lambda: None)})()

        def ask(self, request, timeout):
            return {"errors": {}} if request["op"] == "setup" else {"f": {"function": True}}

        def close(self):
            alive.discard(self)

    monkeypatch.setattr(proxy, "Sandbox", FakeSandbox)
    students = [proxy.Student(f"s{i}", {"<cell ex.0>": "def f(): pass"}, tmp_path) for i in range(60)]
    for _ in range(2):  # two exercises, each checking every student
        for student in students:
            assert student.ready(["f"], "ex") is student.sandbox and student.values == {"f": {"function": True}}
    assert most[0] == proxy.MAX_LIVE and len(alive) == proxy.MAX_LIVE
    for student in students:
        student.close()
    assert not alive and not proxy._LIVE


def test_starting_a_sandbox_does_not_count_against_the_students_time(monkeypatch, tmp_path):
    """The checker's clock (an interval timer) is paused while the student's sandbox starts, so
    a slow start under load cannot turn "took longer than 5 s" into another verdict."""
    import signal

    from helpers.grading.sandbox import time_limit
    from tools.judge import proxy

    student = proxy.Student("s", {"<cell ex.0>": "def f(): pass"}, tmp_path)

    class SlowStart:
        process = type("P", (), {"poll": staticmethod(lambda: None)})()

        def ask(self, request, timeout):
            return {"result": {"value": 7}}

        def close(self):
            pass

    def ready(names, label=""):
        time.sleep(1.5)  # a sandbox that takes longer to start than the case may run
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0, "the case's clock ran during the start"
        student.sandbox = SlowStart()
        return student.sandbox

    monkeypatch.setattr(student, "ready", ready)
    call = proxy.Proxy(student, "f", ["f"], "ex").function()
    with time_limit(1.0):
        assert call() == 7


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_sandbox_that_closes_its_answers_and_keeps_running_does_not_hold_the_grader(tmp_path):
    from tools.judge.sandbox import Sandbox, SandboxError

    lib = keyfree.build([], tmp_path)
    with Sandbox(lib) as box:
        box.ask({"op": "setup", "seconds": 5, "cells": [("<cell e.0>", "import os, time\n"
                 "def hang():\n    for fd in range(3, 64):\n        try:\n            os.close(fd)\n"
                 "        except OSError:\n            pass\n    time.sleep(600)\n")]}, 60)
        started = time.monotonic()
        with pytest.raises(SandboxError, match="stopped"):
            box.ask({"op": "call", "name": "hang", "args": (), "kwargs": {}, "time_limit": 600}, 60)
        assert time.monotonic() - started < 10


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_what_a_students_function_raises_carries_nothing_of_a_hidden_case_back(tmp_path):
    """A function that raises its arguments (or names an exception class after them) would put a
    hidden case's inputs into the feedback, to be answered from a table at the next hand-in: the
    checker sees the exception's built-in type and a fixed message, never the student's text."""
    students_cells = {"<cell ex.0>": ("def tell(x):\n    raise ValueError(f'the case was {x!r}')\n"
                             "def name_it(x):\n    raise type(f'Case_{int(x)}', (Exception,), {})()\n")}
    student = proxy.Student("s", students_cells, keyfree.build([], tmp_path))
    try:
        for name, expected in (("tell", ValueError), ("name_it", Exception)):
            call = proxy.Proxy(student, name, ["tell", "name_it"], "ex").function()
            with pytest.raises(Exception) as raised:
                call(4711.0)
            assert type(raised.value) is expected, name
            assert str(raised.value) == proxy.UNSAID and "4711" not in type(raised.value).__name__
            last = traceback.extract_tb(raised.value.__traceback__)[-1]
            assert last.filename == "<cell ex.0>", "the student still sees the line that raised"
    finally:
        student.close()


def test_the_one_message_passed_on_is_a_stubbed_keys_naming_a_course_key():
    stub = keyfree.MESSAGE.format(name="backprop_by_hand")
    assert str(proxy.mirrored_exception({"type": "RuntimeError", "message": stub})) == stub
    forged = proxy.mirrored_exception({"type": "RuntimeError", "message": keyfree.MESSAGE.format(name="case_4711")})
    assert str(forged) == proxy.UNSAID, "a name that is no key could carry a hidden case"


def test_similarity_sees_through_names_comments_and_layout_not_through_a_different_method():
    from tools.judge import similar

    mine = ("def f(x, w):\n    h = np.maximum(w @ x, 0)\n    g = (h > 0) * 1.0\n    out = np.outer(g * h, x)\n"
            "    total = out.sum(axis=0) + np.tanh(h).mean() * x\n    return {'w': out, 'x': total, 'h': h}")
    renamed = ("# my own work\ndef f(inp, weight):\n    '''Mine.'''\n    act = np.maximum(weight @ inp, 0)\n\n"
               "    mask = (act > 0) * 1.0\n    o = np.outer(mask * act, inp)  # outer\n"
               "    t = o.sum(axis=0) + np.tanh(act).mean() * inp\n    return {'w': o, 'x': t, 'h': act}")
    other = ("def f(x, w):\n    z = w.dot(x)\n    h = z.clip(min=0)\n    rows = [v * x for v in h * np.sign(h)]\n"
             "    out = np.stack(rows)\n    return {'w': out, 'x': out.sum(0) + x * np.tanh(h).mean(), 'h': h}")
    a, b, c = (similar.runs([s]) for s in (mine, renamed, other))
    assert similar.similarity(a, b) == 1.0 and similar.similarity(a, c) < similar.THRESHOLD
    found = similar.copies({"ann": [mine], "bob": [renamed], "cy": [other]}, references=[], starter=[])
    assert found == {"ann": ["bob"], "bob": ["ann"]}
    assert similar.copies({"ann": [mine]}, references=[renamed], starter=[]) == {"ann": ["the course's reference code"]}
    # the starter code every student was given does not count, and what is left is too short to judge
    assert similar.copies({"ann": [mine], "bob": [renamed]}, references=[], starter=[mine]) == {}
