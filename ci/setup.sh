#!/usr/bin/env bash
# Installs what scalebench needs on Debian 12, idempotently (a second run installs nothing).
#   bash ci/setup.sh            # build + MPI run dependencies
#   bash ci/setup.sh --slurm    # also a local Slurm (slurmctld, slurmd, munge, PMIx)
#   bash ci/setup.sh --browser  # also Chromium (report tests)
# Needs root (apt-get). Rust must already be installed (rustup).
set -euo pipefail

# libopenblas0-pthread: a system CBLAS for `--gemm blas|auto` (opened at run time, no headers needed).
pkgs=(libopenmpi-dev openmpi-bin libclang1-14 libclang-common-14-dev libhwloc-dev libudev-dev hwloc pkg-config fonts-dejavu-core python3-venv libopenblas0-pthread)
for arg in "$@"; do
  case "$arg" in
    --slurm) pkgs+=(slurmctld slurmd slurm-client munge libpmix-dev) ;;
    --browser) pkgs+=(chromium) ;;
    *) echo "ci/setup.sh: unknown option $arg (expected --slurm or --browser)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "ci/setup.sh: missing Debian packages: ${missing[*]}; run as root (apt-get) or install them" >&2
    exit 2
  fi
  echo "ci/setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -qq
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "ci/setup.sh: cargo not found: install Rust (https://rustup.rs)" >&2; exit 2; }
