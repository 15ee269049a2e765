"""The main window and its life cycle: start-up, docks, settings, autosave recovery, error dialogs."""
