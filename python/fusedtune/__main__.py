"""python3 -m fusedtune: which libfusedtune this package loads, and its math modes."""
import sys

import fusedtune


def main():
    try:
        lib = fusedtune.library
    except fusedtune.LibraryNotFound as e:
        print(e, file=sys.stderr)
        return 1
    print(f"fusedtune {fusedtune.__version__} (package {fusedtune.__path__[0]})")
    print(f"library: {lib.describe()}")
    print(f"math modes: {', '.join(fusedtune.math_modes())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
