"""The version, apart from the package's ``__init__`` (which holds the public API
and imports the engine): any layer can read it without importing the API."""

__version__ = "0.1.0"
