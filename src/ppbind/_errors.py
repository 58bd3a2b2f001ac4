"""The one error of the binding profile: a stable ``code``, the broken ``link``, a sentence."""

from __future__ import annotations

__all__ = ["BindingError"]


class BindingError(ValueError):
    """A binding check failed, or an input is not what the profile expects.

    ``code`` is stable (``binding_*`` for a link between two protocols, ``pxp_invalid``,
    ``handoff_invalid``, ``parley_invalid``, ``vxp_invalid`` when one protocol's own
    verification refused its record); ``reason`` names the failing member or the protocol's
    own code; ``link`` names the link of the errand that broke (``"pxp"``,
    ``"pxp->decision"``, ``"decision->parley"``, ``"parley->vxp"``, ``"vxp->act"``, …).
    """

    def __init__(
        self, code: str, message: str, *, reason: str | None = None, link: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.link = link

    def to_json(self) -> dict[str, str]:
        """Return ``{"code", "reason"?, "link"?, "message"}``."""
        out = {"code": self.code}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.link is not None:
            out["link"] = self.link
        out["message"] = str(self)
        return out
