"""python3 -m armature info: the library found, its version, and the backends and devices it sees."""
import sys

from . import ArmatureError, info


def main(argv):
    if argv[1:] != ["info"]:
        print("usage: python3 -m armature info", file=sys.stderr)
        return 2
    try:
        print(info())
    except ArmatureError as e:
        print(f"armature: {e}", file=sys.stderr)
        return 1
    return 0


sys.exit(main(sys.argv))
