"""The one place ``modal`` is imported: Modal objects made from a request, and Modal's errors.

``modal`` is imported lazily, when a run is submitted or followed, never when the backend is
chosen or a plan is made. Errors Modal raises become the user errors x-tui shows in one line:
missing or refused credentials, an unreachable server or one that does not answer in time, an image
that did not build, an image builder too old for ``Image.uv_sync``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Final

from x_tui.backends.modal.credentials import SETUP
from x_tui.backends.modal.request import ModalRequest, VolumeMount
from x_tui.compute.sanitize import one_line
from x_tui.compute.worker.errors import BackendUnavailableError, ProviderError, UserError

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


def unanswered(seconds: float, what: str) -> ProviderError:
    """The error of a Modal call that did not answer in time (Modal itself retries ~57 s)."""
    return ProviderError(
        f"Modal did not answer within {seconds:g} s while {what}; check this machine's network"
        " connection to api.modal.com (or MODAL_SERVER_URL)"
    )


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


def secrets(
    modal: ModuleType,
    values: Mapping[str, str],
    platform: Sequence[str],
    environment: str | None,
) -> list[Any]:
    """The function's ``secrets``: the captured values, then each Modal Secret by name.

    The values go to Modal in ``Secret.from_dict`` alone, which Modal keeps as a Secret of the
    app and puts in the container's environment; nothing here writes or prints them.

    Args:
        modal: The ``modal`` module.
        values: The captured values, by their name in the task (none: no ``from_dict``).
        platform: The Modal Secrets the job names (``secrets.platform``).
        environment: The Modal environment they are looked up in.

    Returns:
        ``Secret.from_dict(values)`` when there are values, then ``Secret.from_name(name)`` for
        each name, in order.
    """
    made: list[Any] = []
    if values:
        made.append(modal.Secret.from_dict(dict(values)))
    made += [modal.Secret.from_name(name, environment_name=environment) for name in platform]
    return made


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
    text = one_line(str(error), _MESSAGE_LENGTH) or type(error).__name__
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
    if isinstance(error, exception.NotFoundError) and "Secret" in str(error):
        return ProviderError(
            f"Modal has no such Secret ({text}) in this environment; create it in Modal's"
            " dashboard or with `modal secret create NAME KEY=VALUE`, or remove it from the job's"
            " secrets.platform"
        )
    if isinstance(error, exception.ImageBuildError):
        return ProviderError(
            f"the run's Modal image did not build ({text}); its build log is in Modal's dashboard"
        )
    return ProviderError(f"Modal failed while {what}: {type(error).__name__}: {text}")
