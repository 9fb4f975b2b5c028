#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# mpi_sockets.sh - tests/mpi/mpi.sh with the provider forced to sockets:
# Debian's Open MPI 4.1 two-sided through the ofi MTL (2 and 4 ranks, data
# checked, the MTL must report it opened sockets) and one-sided through
# btl/ofi and osc/rdma (2 and 4 ranks).
PROV=sockets
export PROV
exec sh "${top_srcdir:-$(dirname "$0")/../..}/tests/mpi/mpi.sh"
