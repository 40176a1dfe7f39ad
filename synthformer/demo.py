"""`make demo` / `python -m synthformer.demo`: the main job, `synthformer compare`, with its defaults
(tiny LMs of V, Fix, R, FR, D, FD, R+V, D+V and dynamicconv on the chitchat conversations, ~10 minutes
on a 2-core CPU). Extra arguments go to `synthformer compare`."""
import sys

from .compare import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
