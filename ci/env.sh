# Sourced by the ci/ scripts: settings for running OpenMPI here.
# Root may run mpirun only with these (containers and CI run as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No interactive prompts, no colour codes in logs.
export CARGO_TERM_COLOR=never
