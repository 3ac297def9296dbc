"""The fake SkyPilot's server side and state (not part of SkyPilot's API)."""
