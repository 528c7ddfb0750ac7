"""What every page shares: session state and config widgets, lookup views, the build bar, wording, origins."""
