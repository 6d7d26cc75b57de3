"""The native redirect hook at work: every call of `greet` runs `shout`'s code.

Run (with framehook and this example installed):
``python examples/native_hook/demo.py``
"""

import native_hook_example

import framehook


def greet(name):
    return "hello " + name


def shout(name):
    return "HELLO " + name.upper() + "!"


def main() -> None:
    print("before:    ", greet("ada"))
    handle = native_hook_example.redirect(greet, shout, name="shout")
    print("registered:", framehook.frame_hooks())
    asked = native_hook_example.hook_calls()
    for name in ("ada", "grace", "alan"):
        print("redirected:", greet(name))
    # cache=True: the hook was asked about greet's code once, not per call.
    print("hook calls:", native_hook_example.hook_calls() - asked)
    framehook.remove_frame_hook(handle)
    print("removed:   ", greet("ada"), framehook.frame_hooks())


if __name__ == "__main__":
    main()
