"""Frame sources: one interface (FrameSource), four storages."""
