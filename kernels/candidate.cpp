#include "candidate.h"
