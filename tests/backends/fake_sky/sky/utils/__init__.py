"""The fake ``sky.utils``."""
