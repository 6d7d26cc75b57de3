"""framehook.sot.paddle.install() with the real paddlepaddle wheel: when it refuses."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("paddle", reason="paddlepaddle 3.3.1 is installed on 3.10 and 3.13 in the matrix")


def run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def test_install_swaps_the_five_functions_and_is_idempotent():
    done = run("""
        import framehook.sot, framehook.sot.paddle as fp
        fp.install(); fp.install()
        import paddle.base.core as core
        import paddle.jit.sot  # registers its skip rules through framehook's functions now
        names = ["set_eval_frame", "eval_frame_skip_file_prefix", "eval_frame_no_skip_codes",
                 "sot_setup_codes_with_graph", "sot_set_with_graph"]
        assert all(getattr(core, n) is getattr(framehook.sot, n) for n in names)
        assert fp.installed()
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_install_refuses_after_paddle_jit_sot_was_imported():
    done = run("""
        import paddle.jit.sot
        import framehook.sot.paddle as fp
        try:
            fp.install()
        except RuntimeError as error:
            print(error)
    """)
    assert done.returncode == 0, done.stderr
    assert "must run before paddle.jit.sot is imported" in done.stdout


def test_install_refuses_while_paddles_own_eval_frame_is_active():
    done = run("""
        import collections
        import paddle.base.core as core
        CustomCode = collections.namedtuple("CustomCode", "code disable_eval_frame")
        callback = lambda frame: CustomCode(None, False)  # Paddle's eval frame needs this shape
        core.set_eval_frame(callback)
        import framehook.sot.paddle as fp
        try:
            fp.install()
        except RuntimeError as error:
            print(error)
        finally:
            assert core.set_eval_frame(None) is callback  # left as it was
    """)
    assert done.returncode == 0, done.stderr
    assert "Paddle's own eval frame is active" in done.stdout


def test_framehook_recovers_after_paddles_eval_frame_displaced_it():
    # Paddle's own set_eval_frame installs its function over framehook's, then
    # puts back CPython's default: framehook must be able to hook again.
    done = run("""
        import collections
        import framehook
        import paddle.base.core as core
        CustomCode = collections.namedtuple("CustomCode", "code disable_eval_frame")

        def f():
            return 1

        seen = []
        handle = framehook.add_frame_hook(lambda frame: seen.append(frame.f_code) or None)
        core.set_eval_frame(lambda frame: CustomCode(None, False))
        core.set_eval_frame(None)
        framehook.remove_frame_hook(handle)
        assert not framehook._native._is_installed()
        with framehook.frame_hook(lambda frame: seen.append(frame.f_code) or None):
            f()
        assert f.__code__ in seen
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
