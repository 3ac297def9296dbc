"""The fake ``sky.catalog``."""
