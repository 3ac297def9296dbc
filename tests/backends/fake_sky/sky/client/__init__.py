"""The fake SkyPilot client."""
