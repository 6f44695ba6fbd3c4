"""Copies the licence of every third-party library a wheel carries into the wheel.

A portable wheel holds code from Debian packages in two ways: archives linked into the extension
(ONNX_LIGHT_STATIC_DEPS) and shared libraries auditwheel copies next to it (everything the
extension loads that is not part of the manylinux baseline). Each of those comes from a Debian
package whose /usr/share/doc/<package>/copyright file states its licence and copyright holders;
this script copies those files to OUT/<package>.txt and writes OUT/README.txt, the list of what
is bundled and from where. cmake runs it when it installs the extension into a wheel
(python/CMakeLists.txt).

    python3 scripts/wheel_licenses.py --module EXT.so --out DIR [ARCHIVE.a ...]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

# Libraries every manylinux system provides (auditwheel's manylinux policy whitelist): they are
# not bundled, so their licences are not ours to ship.
_SYSTEM = re.compile(
    r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libmvec|libdl|librt|libpthread|libutil|libnsl|libanl|"
    r"libresolv|libstdc\+\+|libgcc_s|libatomic|libz|libexpat)\.so"
)


def _loaded_libraries(module):
    """Resolved paths of the shared libraries `module` loads (ldd), minus the system baseline."""
    text = subprocess.run(["ldd", module], check=True, capture_output=True, text=True).stdout
    paths = []
    for line in text.splitlines():
        name, _, rest = line.strip().partition(" => ")
        path = rest.split(" (")[0].strip()
        if not _SYSTEM.match(os.path.basename(name)):
            if not path.startswith("/"):
                sys.exit(f"wheel_licenses: {name} is not found ({line.strip()})")
            paths.append(path)
    return paths


def _package_of(path):
    out = subprocess.run(["dpkg", "-S", os.path.realpath(path)], check=True, capture_output=True, text=True)
    return out.stdout.split(":", 1)[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", required=True, help="the built extension module")
    parser.add_argument("--out", required=True, help="folder to write the licence files to")
    parser.add_argument("archives", nargs="*", help="static archives linked into the module")
    args = parser.parse_args()

    entries = [(path, "linked statically") for path in args.archives]
    entries += [(path, "bundled by auditwheel") for path in _loaded_libraries(args.module)]
    os.makedirs(args.out, exist_ok=True)
    lines = ["Third-party code in this wheel, the Debian package it came from, and how it is included.",
             "Each <package>.txt is that package's Debian copyright file (licence text included).", ""]
    copied = set()
    for path, how in entries:
        package = _package_of(path)
        lines.append(f"{os.path.basename(path)}: {package}, {how}")
        if package not in copied:
            source = f"/usr/share/doc/{package}/copyright"
            if not os.path.exists(source):
                sys.exit(f"wheel_licenses: {source} is missing for {path}")
            shutil.copyfile(source, os.path.join(args.out, f"{package}.txt"))
            copied.add(package)
    with open(os.path.join(args.out, "README.txt"), "w") as readme:
        readme.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
