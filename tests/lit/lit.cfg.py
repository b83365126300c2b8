# lit configuration of texc's FileCheck tests (docs/testing.md, "FileCheck tests").
#
# Each .tex file under tests/lit/ is a test: its `# RUN:` lines run texc and pipe what it prints
# into FileCheck, which matches the file's `# CHECK...:` lines. Run them through ctest
# (`ctest -R lit`) or directly:
#
#   lit -sv tests/lit --param build_dir=build
#
# build_dir is the CMake build directory (default: build/ in the repository). CMake writes
# BUILD/tests/lit/texc-lit-paths.py there with the paths of the texc binary and of FileCheck.
import os

import lit.formats

config.name = "texc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tex"]
# Schedule files and other inputs of the tests, not tests themselves.
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

repo_root = os.path.dirname(os.path.dirname(config.test_source_root))
build_dir = os.path.abspath(lit_config.params.get("build_dir", os.path.join(repo_root, "build")))
paths_file = os.path.join(build_dir, "tests", "lit", "texc-lit-paths.py")
if not os.path.isfile(paths_file):
    lit_config.fatal(
        "%s is missing: configure and build texc in %s first, or pass --param build_dir=BUILD "
        "(the CMake build directory)" % (paths_file, build_dir)
    )
paths = {}
with open(paths_file) as f:
    exec(f.read(), paths)

# Temporary files (%t) go to the build directory, never into the source tree.
config.test_exec_root = os.path.join(build_dir, "tests", "lit")

for name in ("texc", "filecheck"):
    if not paths.get(name) or not os.path.isfile(paths[name]):
        lit_config.fatal("%s: no %s at '%s' (is llvm-19-tools installed?)" % (paths_file, name, paths.get(name)))

# %texc first: the default substitutions (%t among them) come after the configuration's.
config.substitutions.append(("%texc", paths["texc"]))
config.substitutions.append((r"\bFileCheck\b", paths["filecheck"]))

# The code texc generates depends on the CPU it targets; every RUN line names one (--cpu), so
# the host's CPU never shows. texc reads nothing else from the environment that changes what
# it prints.
