"""Where Mozilla's in-tree resource monitor is, and which one it is.

The bench measures tc-profile against the monitor Firefox CI runs today: the streaming
`resourcemonitor.py` copied into peers/ (peers/README.md; or wherever $TC_PROFILE_PEERS
points), with its runner monitor_cmd.py. It needs psutil
(./setup-baseline). Importing this module puts the monitor on sys.path.
"""
import hashlib
import os
import sys
from pathlib import Path

PEERS = Path(os.environ.get("TC_PROFILE_PEERS", Path(__file__).resolve().parent / "peers")).resolve()
MONITOR = PEERS / "mozsystemmonitor" / "resourcemonitor.py"
RUNNER = PEERS / "monitor_cmd.py"

if not MONITOR.is_file():
    sys.exit(f"bench: no monitor at {MONITOR}; set TC_PROFILE_PEERS to the peers directory")
sys.path.insert(0, str(PEERS))


def version():
    """The monitor's file and its sha256, so a report says which one it ran."""
    digest = hashlib.sha256(MONITOR.read_bytes()).hexdigest()
    return f"{MONITOR} (sha256 {digest})"


if __name__ == "__main__":
    print(version())
