"""Entry point of rlab-ray: registers the ``ray`` sandbox; imports neither ray nor numpy."""

from __future__ import annotations

from rlab_core.api import SandboxInfo, hookimpl


def _ray():
    from rlab_ray.sandbox import RaySandbox  # ray is imported only here, when a run needs it

    return RaySandbox


@hookimpl
def rlab_register_sandboxes():
    from rlab_ray.options import RaySandboxConfig

    return [
        SandboxInfo(
            "ray",
            "Each candidate on a Ray cluster (address=local starts one), in the node's own jail; "
            "a lost worker is retried.",
            _ray,
            RaySandboxConfig,
        )
    ]
