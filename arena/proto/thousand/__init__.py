"""Generated from proto/thousand/v1 by scripts/gen-proto.sh; do not edit."""
