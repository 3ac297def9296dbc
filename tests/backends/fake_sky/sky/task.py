"""``sky.Task.from_yaml_config``: the task dict, checked against SkyPilot 0.14.1's schema keys."""

from __future__ import annotations

import copy
from typing import Any

TASK_KEYS = {
    "name",
    "workdir",
    "setup",
    "run",
    "envs",
    "secrets",
    "num_nodes",
    "resources",
    "file_mounts",
    "volumes",
    "config",
    "service",
    "pool",
    "event_callback",
    "inputs",
    "outputs",
    "api_server_access",
    "managed_secrets",
}
RESOURCE_KEYS = {
    "infra",
    "cloud",
    "region",
    "zone",
    "accelerators",
    "cpus",
    "memory",
    "instance_type",
    "use_spot",
    "job_recovery",
    "disk_size",
    "disk_tier",
    "network_tier",
    "ports",
    "labels",
    "accelerator_args",
    "image_id",
    "autostop",
    "any_of",
    "ordered",
    "priority",
    "max_hourly_cost",
    "local_disk",
    "ephemeral_storage",
    "priority_class",
}


class Task:
    """A task, kept as its config."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.name = config.get("name")

    @classmethod
    def from_yaml_config(
        cls,
        config: dict[str, Any],
        env_overrides: list[tuple[str, str]] | None = None,
        secrets_overrides: list[tuple[str, str]] | None = None,
    ) -> Task:
        unknown = set(config) - TASK_KEYS
        if unknown:
            raise ValueError(f"Invalid task YAML: additional properties {sorted(unknown)}")
        unknown = set(config.get("resources") or {}) - RESOURCE_KEYS
        if unknown:
            raise ValueError(f"Invalid resources YAML: additional properties {sorted(unknown)}")
        for key in ("setup", "run"):
            if key in config and not isinstance(config[key], str):
                raise ValueError(f"Invalid task YAML: {key} must be a string")
        return cls(copy.deepcopy(config))
