/* MPI_IN_PLACE is a macro whose value differs between MPI libraries (OpenMPI: (void *)1,
 * MPICH: (void *)-1) and rsmpi does not export it, so it is read here from the real header. */
#include <mpi.h>

void *scalebench_mpi_in_place(void) { return MPI_IN_PLACE; }
