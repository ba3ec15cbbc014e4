"""ft_status as Python exceptions: one class per status, all under FusedtuneError.

Each exception carries .status (the ft_status number), .status_name ("FT_ERR_NOT_FOUND") and
.message (the library's ft_errmsg text, or the package's own reason when the check happened in
Python before any call). str(e) is the message.
"""


class FusedtuneError(Exception):
    """Base of every error the package raises for a failed fusedtune call or check."""

    status = None
    status_name = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgumentError(FusedtuneError, ValueError):
    """FT_ERR_INVALID_ARG: a bad argument (shape, dtype, device, alignment, unbound name...)."""


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong Python type ("problem must be a fusedtune.Problem, not str"): a
    TypeError, and an InvalidArgumentError like every other bad argument."""


class NotFoundError(FusedtuneError, LookupError):
    """FT_ERR_NOT_FOUND: nothing stored (a database file, a tuned result, a device)."""


class NotTunedError(NotFoundError):
    """Nothing tuned for a problem; .command is the `fusedtune tune` command line that would."""

    def __init__(self, message, command=None, status=None):
        super().__init__(message, status)
        self.command = command


class NoDeviceError(FusedtuneError):
    """FT_ERR_NO_DEVICE: no usable CUDA device or driver."""


class DatabaseError(FusedtuneError):
    """FT_ERR_DB: not a fusedtune database, unreadable, corrupt, read-only when a write was asked."""


class CudaError(FusedtuneError):
    """FT_ERR_CUDA."""


class CompileError(FusedtuneError):
    """FT_ERR_COMPILE: NVRTC failed."""


class ParseError(FusedtuneError, ValueError):
    """FT_ERR_PARSE: the epilogue expression does not parse ("epilogue: col C: what")."""


class OutOfMemoryError(FusedtuneError, MemoryError):
    """FT_ERR_NOMEM."""


class UnsupportedError(FusedtuneError):
    """FT_ERR_UNSUPPORTED: a math mode or configuration that does not apply."""


class VersionError(FusedtuneError):
    """FT_ERR_VERSION: a database or export from a newer fusedtune."""


class InputOutputError(FusedtuneError):
    """FT_ERR_IO: a file that cannot be read (missing, a directory...)."""


class FormatError(FusedtuneError, ValueError):
    """FT_ERR_FORMAT: a malformed import file."""


class WrongResultError(FusedtuneError):
    """FT_ERR_WRONG_RESULT: a kernel result did not match the float64 reference."""


class Interrupted(FusedtuneError):
    """FT_ERR_INTERRUPTED: a tune stopped early (what it measured stays stored)."""


class CublasError(FusedtuneError):
    """FT_ERR_CUBLAS."""


class InternalError(FusedtuneError):
    """FT_ERR_INTERNAL."""


# ft_status value -> (C name, class): the list of include/fusedtune.h's FT_STATUS_MAP. The CPU
# test checks that every status the loaded library names has its entry here.
STATUSES = {
    1: ("FT_ERR_INVALID_ARG", InvalidArgumentError),
    2: ("FT_ERR_NOT_FOUND", NotFoundError),
    3: ("FT_ERR_NO_DEVICE", NoDeviceError),
    4: ("FT_ERR_DB", DatabaseError),
    5: ("FT_ERR_CUDA", CudaError),
    6: ("FT_ERR_COMPILE", CompileError),
    7: ("FT_ERR_PARSE", ParseError),
    8: ("FT_ERR_NOMEM", OutOfMemoryError),
    9: ("FT_ERR_UNSUPPORTED", UnsupportedError),
    10: ("FT_ERR_VERSION", VersionError),
    11: ("FT_ERR_IO", InputOutputError),
    12: ("FT_ERR_FORMAT", FormatError),
    13: ("FT_ERR_WRONG_RESULT", WrongResultError),
    14: ("FT_ERR_INTERRUPTED", Interrupted),
    15: ("FT_ERR_CUBLAS", CublasError),
    16: ("FT_ERR_INTERNAL", InternalError),
}

for _value, (_name, _cls) in STATUSES.items():
    _cls.status, _cls.status_name = _value, _name
NotTunedError.status, NotTunedError.status_name = NotFoundError.status, NotFoundError.status_name


def error_for(status, message, cls=None):
    """The exception for a failed call's status with the library's message."""
    name, base = STATUSES.get(status, (f"ft_status {status}", FusedtuneError))
    err = (cls or base)(message, status=status)
    if err.status_name is None:
        err.status_name = name
    return err
