"""``SSHConfigHelper.ssh_cluster_path``: where each cluster's SSH configuration is written."""

from __future__ import annotations

import os


class SSHConfigHelper:
    """Only the attribute the bridge reads, pointing under ``$FAKE_SKY_ROOT``."""

    ssh_cluster_path = os.path.join(os.environ.get("FAKE_SKY_ROOT", "~/.sky"), "generated/ssh/{}")
