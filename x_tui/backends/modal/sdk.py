"""The one place ``modal`` is imported: Modal objects made from a request, and Modal's errors.

``modal`` is imported lazily, when a run is submitted or followed, never when the backend is
chosen or a plan is made. Errors Modal raises become the user errors x-tui shows in one line:
missing or refused credentials, an unreachable server, an image that did not build, an image
builder too old for ``Image.uv_sync``.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Any, Final

from x_tui.backends.modal.credentials import SETUP
from x_tui.backends.modal.request import ModalRequest, VolumeMount
from x_tui.compute.errors import BackendUnavailableError, ProviderError, UserError

INSTALL_HINT: Final = (
    "the modal backend needs Modal; install it with uv add 'x-tui[modal]'"
    " (or pip install 'x-tui[modal]')"
)
BUILDER_HINT: Final = (
    "Modal's image builder for this workspace is older than 2025.06, which Image.uv_sync needs:"
    " set it to 2025.06 or later in Modal's dashboard under Settings → Image config"
    " (or set MODAL_IMAGE_BUILDER_VERSION=2025.06)"
)
_BUILDER_TEXT: Final = "Image builder version"
_MESSAGE_LENGTH: Final = 300


def modal_installed() -> bool:
    """Whether ``modal`` can be imported here, found without importing it."""
    try:
        return importlib.util.find_spec("modal") is not None
    except (ImportError, ValueError):
        return False


def import_modal() -> ModuleType:
    """Import ``modal``.

    Raises:
        BackendUnavailableError: If it is not installed, saying how to install it.
    """
    try:
        return importlib.import_module("modal")
    except ImportError:
        raise BackendUnavailableError(INSTALL_HINT) from None


def one_line(text: str) -> str:
    """``text`` on one line, shortened: provider messages are shown as one line."""
    line = " ".join(text.split())
    return line if len(line) <= _MESSAGE_LENGTH else line[: _MESSAGE_LENGTH - 3] + "..."


def build_image(modal: ModuleType, request: ModalRequest) -> Any:
    """The request's image: ``Image.debian_slim`` and each later layer, in order."""
    first, *rest = request.image
    image = getattr(modal.Image, first.method)(*first.args, **first.options)
    for step in rest:
        image = getattr(image, step.method)(*step.args, **step.options)
    return image


def volume(modal: ModuleType, mount: VolumeMount, environment: str | None) -> Any:
    """A mount's Volume, read-only when the job's mount is (and then never created)."""
    found = modal.Volume.from_name(
        mount.volume, environment_name=environment, create_if_missing=mount.create_if_missing
    )
    return found.read_only() if mount.read_only else found


def is_modal_error(error: BaseException) -> bool:
    """Whether ``error`` is one of Modal's own errors (``modal.exception.Error``)."""
    exception = importlib.import_module("modal.exception")
    return isinstance(error, exception.Error)


def provider_error(error: BaseException, *, what: str) -> UserError:
    """The user error for an error Modal raised while doing ``what``.

    Args:
        error: What Modal raised.
        what: What x-tui was doing (``"submitting the run"``), for the message.

    Returns:
        :class:`BackendUnavailableError` for refused credentials, else :class:`ProviderError`
        with one line saying what happened.
    """
    if isinstance(error, UserError):
        return error
    exception = importlib.import_module("modal.exception")
    text = one_line(str(error)) or type(error).__name__
    if _BUILDER_TEXT in str(error):
        return ProviderError(BUILDER_HINT)
    if isinstance(error, exception.AuthError):
        return BackendUnavailableError(
            f"Modal refused the credentials while {what} ({text}): {SETUP}"
        )
    if isinstance(error, exception.ConnectionError):
        return ProviderError(
            f"could not reach Modal while {what} ({text}); check this machine's network connection"
        )
    if isinstance(error, exception.ImageBuildError):
        return ProviderError(
            f"the run's Modal image did not build ({text}); its build log is in Modal's dashboard"
        )
    return ProviderError(f"Modal failed while {what}: {type(error).__name__}: {text}")
