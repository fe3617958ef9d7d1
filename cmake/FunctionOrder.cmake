# gatehouse_order_functions(TARGET ORDER_FILE [LIBRARY ...])
#
# Where lld links a release build, the functions a start and the first calls
# run (ORDER_FILE, written by scripts/order-functions.sh) come first in
# TARGET's text, each compiled into a section of its own (so are the static
# LIBRARYs linked into it): the pages a serving host touches are fewer, and
# each page first touched is a fault (docs/performance.md, "What a page first
# touched costs here"). Without lld, and in a sanitizer or fuzz build, where
# layout means nothing, the link is as it was.
#
# lld 16 (Debian's lld-16), where the compiler can be pointed at it (clang's
# --ld-path), also packs the relative relocations (DT_RELR, which glibc 2.36
# applies): the table the dynamic linker reads at every start shrinks from
# some 160 KiB to a few. Otherwise the system's lld links, unpacked.
include(CheckLinkerFlag)
find_program(GATEHOUSE_LLD_16 NAMES ld.lld-16)
if(GATEHOUSE_LLD_16)
  check_linker_flag(CXX "--ld-path=${GATEHOUSE_LLD_16}" GATEHOUSE_HAVE_LLD_PATH)
endif()
if(GATEHOUSE_HAVE_LLD_PATH)
  set(GATEHOUSE_LLD_OPTIONS "--ld-path=${GATEHOUSE_LLD_16}" "LINKER:-z,pack-relative-relocs")
else()
  check_linker_flag(CXX "-fuse-ld=lld" GATEHOUSE_HAVE_LLD)
  if(GATEHOUSE_HAVE_LLD)
    set(GATEHOUSE_LLD_OPTIONS -fuse-ld=lld)
  endif()
endif()

function(gatehouse_order_functions target order_file)
  if(GATEHOUSE_SANITIZE OR GATEHOUSE_FUZZ OR NOT GATEHOUSE_LLD_OPTIONS)
    return()
  endif()
  foreach(compiled ${target} ${ARGN})
    target_compile_options(${compiled} PRIVATE -ffunction-sections)
  endforeach()
  target_link_options(${target} PRIVATE ${GATEHOUSE_LLD_OPTIONS} "LINKER:--symbol-ordering-file=${order_file}"
    "LINKER:--no-warn-symbol-ordering")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${order_file})
endfunction()
