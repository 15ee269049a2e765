"""Files in and out: presets, project files, importers and exporters. No Qt here."""
