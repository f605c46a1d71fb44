#!/usr/bin/env bash
# ci/device-bundle.sh [DIR]: what a GPU machine without Open MPI needs to run this tree's
# CUDA-featured scalebench as an MPI singleton, in DIR (default .dev, git-ignored through
# .git/info/exclude; carry it to the device machine). Holds:
#   bin/scalebench   built here with --features cuda (or $SCALEBENCH_BIN), stripped (the carry limit is 64 MiB)
#   lib/             the shared libraries it and Open MPI's components need that a bare
#                    Ubuntu/Debian GPU image lacks (resolved by ldd, not a hand-kept list)
#   ompi/openmpi3/   Open MPI's MCA components (loaded by path at MPI_Init)
#   hwloc/           hwloc's PCI plugin (topology of GPUs and NICs)
#   env.sh           `source DIR/env.sh` there: the paths and the singleton settings
# Then, on the device machine: `source .dev/env.sh && SCALEBENCH_BIN=.dev/bin/scalebench
# bash ci/gpu-node.sh "$OUT/gpu"`. Session 19 built this by hand; the settings are the ones
# that worked there (H200, Ubuntu 24.04, no Open MPI installed).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/env.sh
dir=${1:-.dev}
target=${CARGO_TARGET_DIR:-target}
bin=${SCALEBENCH_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --locked --features cuda --bin scalebench
  bin=$target/release/scalebench
fi
# A binary without the cuda feature would only reach its refusal on the GPU machine, after the
# minutes it takes to start one: check here (the version line names the features).
case "$("$bin" --version 2>/dev/null)" in
  *features*cuda*) ;;
  *) echo "ci/device-bundle.sh: $bin was not built with --features cuda ($("$bin" --version 2>&1 | head -n 1)); unset SCALEBENCH_BIN to build it here" >&2; exit 2 ;;
esac
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib" "$dir/ompi" "$dir/hwloc"
strip -o "$dir/bin/scalebench" "$bin"

multiarch=/usr/lib/x86_64-linux-gnu
mca=$multiarch/openmpi/lib/openmpi3
cp -a "$mca" "$dir/ompi/"
hwloc_pci=$(find "$multiarch" -name 'hwloc_pci.so' 2>/dev/null | head -n 1)
[ -n "$hwloc_pci" ] && cp "$hwloc_pci" "$dir/hwloc/"

# Every library the binary, the MCA components and the hwloc plugin load, except the C and
# C++ runtimes every GPU image has (copying glibc would mix two loaders' libraries).
base='^(libc|libm|libdl|librt|libpthread|libresolv|libgcc_s|libstdc\+\+|ld-linux-x86-64|linux-vdso)\.'
{
  ldd "$dir/bin/scalebench"
  find "$dir/ompi" "$dir/hwloc" -name '*.so' -exec ldd {} \;
} 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $base ]] && continue
    cp -L "$path" "$dir/lib/$name"
  done

cat > "$dir/env.sh" <<'EOF'
# Sourced on the device machine: run the bundled scalebench as an MPI singleton.
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_MCA_mca_base_component_path="$B/ompi/openmpi3"
# No orted on the machine: a singleton must not try to start one.
export OMPI_MCA_ess_singleton_isolated=1
# Components whose own dependencies are absent there (UCX, ...) would print a warning each.
export OMPI_MCA_mca_base_component_show_load_errors=0
export HWLOC_PLUGINS_PATH="$B/hwloc"
# The path session 19's runs took (UCX and libfabric travel as the components' dependencies,
# but a singleton needs no network): ob1 over self and shared memory.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
EOF
echo "bundle: $dir ($(du -sh "$dir" | cut -f1); the carry limit is 64 MiB), $(ls "$dir/lib" | wc -l) libraries"
