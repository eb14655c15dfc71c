/* MPI_IN_PLACE is a macro ((void *)1 in Open MPI, (void *)-1 in MPICH) that bindgen cannot
 * translate; this returns the value of the MPI we were compiled against. */
#include <mpi.h>

void *baton_mpi_in_place(void) { return MPI_IN_PLACE; }
