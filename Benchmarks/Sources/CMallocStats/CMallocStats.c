// The header's functions are static inline; SwiftPM needs a source file to build the target.
#include "CMallocStats.h"
