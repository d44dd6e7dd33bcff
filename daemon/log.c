/* log: see log.h. */
#include "log.h"

int log_to_journal;
