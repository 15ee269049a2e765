"""The flags commands share and how they turn into a project: argument types, layout, load, features."""
