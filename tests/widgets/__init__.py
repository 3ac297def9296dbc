"""The widgets' own tests, each widget in an app of its own."""
