import types
from collections.abc import Generator
from typing import Any, Callable, Literal, final

from typing_extensions import TypeAlias

__all__ = [
    "Frame",
    "_C_API",
    "_bytecode_decode",
    "_bytecode_decode_canonical",
    "_bytecode_reassemble",
    "_bytecode_relined",
    "HookHandle",
    "SotRef",
    "SotTranslated",
    "_sot_call_with",
    "_sot_construct",
    "_sot_resumed",
    "_sot_primed_generator",
    "_sot_resumed_in",
    "_sot_drop_caller_entry",
    "_sot_rerun",
    "_sot_assume",
    "_sot_never_translated",
    "_sot_fused",
    "_sot_fused_calls",
    "_sot_fused_check_layout",
    "_sot_fused_check_matmul",
    "_sot_fused_kernel",
    "_sot_reset",
    "add_frame_hook",
    "build_info",
    "clear_frame_hooks",
    "disabled",
    "eval_frame_no_skip_codes",
    "eval_frame_skip_file_prefix",
    "frame_hooks",
    "remove_frame_hook",
    "set_eval_frame",
    "sot_pass_exception_tables",
    "sot_set_with_graph",
    "sot_setup_codes_with_graph",
]

@final
class Frame:
    """The frame a hook receives; valid only until the hook returns."""

    @property
    def f_code(self) -> types.CodeType: ...
    @property
    def original_code(self) -> types.CodeType: ...
    @property
    def f_globals(self) -> dict[str, Any]: ...
    @property
    def f_builtins(self) -> dict[str, Any]: ...
    @property
    def f_locals(self) -> dict[str, Any]: ...
    @property
    def f_back(self) -> types.FrameType | None: ...
    @property
    def f_lineno(self) -> int: ...

_Hook: TypeAlias = Callable[[Frame], types.CodeType | None]
_Event: TypeAlias = Literal["call", "return", "exception", "yield", "resume"]
_Observer: TypeAlias = Callable[[_Event, types.CodeType, types.CodeType | None], object]

# The C API table for native hooks (framehook.h), a PyCapsule.
_C_API: object

@final
class HookHandle:
    @property
    def name(self) -> str: ...
    @property
    def hook(self) -> _Hook | None: ...
    @property
    def observer(self) -> _Observer | None: ...
    @property
    def native(self) -> bool: ...
    @property
    def observes(self) -> bool: ...
    @property
    def cache(self) -> bool: ...
    @property
    def on_error(self) -> Literal["raise", "log"]: ...
    @property
    def enabled(self) -> bool: ...
    @enabled.setter
    def enabled(self, enabled: bool) -> None: ...
    @property
    def registered(self) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class disabled:
    def __init__(self) -> None: ...
    def __enter__(self) -> disabled: ...
    def __exit__(self, *_exc: object) -> Literal[False]: ...

def add_frame_hook(
    hook: _Hook | None,
    *,
    name: str | None = None,
    cache: bool = False,
    on_error: Literal["raise", "log"] = "raise",
    observer: _Observer | None = None,
) -> HookHandle: ...
def remove_frame_hook(hook: HookHandle | _Hook | _Observer, /) -> None: ...
def clear_frame_hooks() -> None: ...
def frame_hooks() -> list[HookHandle]: ...
def build_info() -> dict[str, Any]: ...
def set_eval_frame(callback: object) -> Any: ...
def eval_frame_skip_file_prefix(prefixes: tuple[str, ...]) -> None: ...
def eval_frame_no_skip_codes(codes: tuple[types.CodeType, ...]) -> None: ...
def sot_setup_codes_with_graph(codes: tuple[types.CodeType, ...]) -> None: ...
def sot_set_with_graph(code: types.CodeType) -> None: ...
def sot_pass_exception_tables(enabled: bool) -> bool: ...

# framehook's own SOT translator (main interpreter only); framehook.sot is its API.
@final
class SotTranslated:
    """A function whose calls run translated (what ``framehook.sot.translate`` returns)."""

    def __new__(
        cls,
        function: Callable[..., Any],
        backend: object,
        full_graph: bool,
        cache_size: int,
        traced_prefixes: list[str],
        cost_model: bool,
    ) -> SotTranslated: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: object | None, owner: object | None = None, /) -> Any: ...
    def _stats(self) -> dict[str, Any]: ...
    def _explain_translations(self) -> None: ...

@final
class SotRef:
    """A symbol in a graph description a backend compiles: inputs first, then one per node."""

    @property
    def index(self) -> int: ...

def _sot_reset() -> None: ...
def _sot_call_with(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any: ...
def _sot_construct(cls: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...
def _sot_primed_generator(
    function: Callable[[list[Any]], Generator[Any, Any, Any]], handed: list[Any], qualname: str, /
) -> Generator[Any, Any, Any]: ...
def _sot_resumed(bridge: Callable[..., Any], handed: list[Any], /, *_args: Any, **_kwargs: Any) -> Any: ...
def _sot_resumed_in(
    callee: Callable[..., Any], code: types.CodeType, contents: tuple[Any, ...], handed: list[Any], /,
    *_args: Any, **_kwargs: Any,
) -> Any: ...
def _sot_drop_caller_entry(exception: BaseException) -> types.TracebackType | None: ...
def _sot_rerun(
    exception: BaseException, assumptions_only: bool, code: types.CodeType, globals: dict[str, Any],
    closure: tuple[Any, ...] | None, *parameters: Any,
) -> Any: ...
def _sot_assume(value: object, seen: bool) -> None: ...
def _sot_never_translated(code: types.CodeType) -> None: ...

# The numpy backend's fused kernels (src/sot/fused): a plan is
# (kernel, allocate, result layouts).
def _sot_fused_kernel(program: bytes, dtype: object) -> object: ...  # a capsule
def _sot_fused(plan: tuple[Any, ...], *operands: Any) -> tuple[Any, ...] | None: ...
def _sot_fused_calls() -> tuple[int, int]: ...
def _sot_fused_check_layout(array: object, data: int, shape: list[int], strides: list[int]) -> bool: ...
def _sot_fused_check_matmul(matmul: object, float32_number: int, float64_number: int) -> bool: ...

# framehook.bytecode's binding (main interpreter only): rows of
# (name, arg, argval, argrepr, target, positions, handler).
_Row: TypeAlias = tuple[
    str,
    int | None,
    object,
    str,
    int | None,
    tuple[int | None, int | None, int | None, int | None],
    tuple[int, int, bool] | None,
]

def _bytecode_decode(code: types.CodeType) -> list[_Row]: ...
def _bytecode_decode_canonical(code: types.CodeType) -> list[_Row]: ...
def _bytecode_reassemble(code: types.CodeType, via_ir: bool) -> types.CodeType: ...
def _bytecode_relined(code: types.CodeType, lines: list[int]) -> types.CodeType: ...
