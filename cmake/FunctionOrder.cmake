# gatehouse_order_functions(TARGET ORDER_FILE [LIBRARY ...])
#
# Where lld links a release build, the functions a start and the first calls
# run (ORDER_FILE, written by scripts/order-functions.sh) come first in
# TARGET's text, each compiled into a section of its own (so are the static
# LIBRARYs linked into it): the pages a serving host touches are fewer, and
# each page first touched is a fault (docs/performance.md, "What a page first
# touched costs here"). Without lld, and in a sanitizer or fuzz build, where
# layout means nothing, the link is as it was.
include(CheckLinkerFlag)
check_linker_flag(CXX "-fuse-ld=lld" GATEHOUSE_HAVE_LLD)

function(gatehouse_order_functions target order_file)
  if(GATEHOUSE_SANITIZE OR GATEHOUSE_FUZZ OR NOT GATEHOUSE_HAVE_LLD)
    return()
  endif()
  foreach(compiled ${target} ${ARGN})
    target_compile_options(${compiled} PRIVATE -ffunction-sections)
  endforeach()
  target_link_options(${target} PRIVATE -fuse-ld=lld "LINKER:--symbol-ordering-file=${order_file}"
    "LINKER:--no-warn-symbol-ordering")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${order_file})
endfunction()
