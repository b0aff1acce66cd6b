// Being written.
#include "reference_testing.h"
