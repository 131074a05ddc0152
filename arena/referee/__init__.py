"""The referee: runs one match between seats, keeps time, applies fallbacks, records the replay."""
