"""The fake ``sky.server``."""
