dnl MPI for data-parallel training (libggmlc-mpi, include/ggmlc-dp.h): --with-mpi=auto|yes|no.
dnl Open MPI is found through pkg-config (ompi-c), else through mpicc's --showme; libggmlc itself
dnl never links MPI.  Sets MPI_CFLAGS, MPI_LIBS, MPIRUN, HAVE_MPI and mpi_reason for the summary.
AC_ARG_WITH([mpi],
  [AS_HELP_STRING([--with-mpi=auto|yes|no], [build libggmlc-mpi, data-parallel training over MPI (default: auto)])],
  [], [with_mpi=auto])
have_mpi=no
mpi_reason="disabled by --with-mpi=no"
AS_IF([test "x$with_mpi" != xno], [
  PKG_CHECK_MODULES([MPI], [ompi-c], [mpi_found="pkg-config ompi-c"], [mpi_found=no])
  AS_IF([test "x$mpi_found" = xno], [
    AC_PATH_PROG([MPICC], [mpicc], [no])
    AS_IF([test "x$MPICC" != xno], [
      MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null`
      MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
      AS_IF([test -n "$MPI_LIBS"], [mpi_found="$MPICC"])
    ])
  ])
  AS_IF([test "x$mpi_found" != xno], [
    save_CFLAGS=$CFLAGS; save_LIBS=$LIBS
    CFLAGS="$CFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
    AC_MSG_CHECKING([whether MPI programs link])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Request r; return MPI_Ireduce(0, 0, 0, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, &r);]])],
      [have_mpi=yes; mpi_reason="found through $mpi_found"], [mpi_reason="$mpi_found found, but an MPI program does not link"])
    AC_MSG_RESULT([$have_mpi])
    CFLAGS=$save_CFLAGS; LIBS=$save_LIBS
  ], [mpi_reason="neither pkg-config ompi-c nor mpicc found (apt-get install libopenmpi-dev openmpi-bin)"])
  AC_PATH_PROG([MPIRUN], [mpirun], [no])
  AS_IF([test "x$with_mpi" = xyes && test "x$have_mpi" != xyes], [AC_MSG_ERROR([--with-mpi=yes but $mpi_reason])])
])
AS_IF([test "x$have_mpi" = xyes], [AC_DEFINE([GGMLC_WITH_MPI], [1], [libggmlc-mpi is built])])
AC_SUBST([MPI_CFLAGS])
AC_SUBST([MPI_LIBS])
AC_SUBST([MPIRUN])
AM_CONDITIONAL([HAVE_MPI], [test "x$have_mpi" = xyes])
