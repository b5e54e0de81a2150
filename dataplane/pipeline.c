/* stub */
#include "pipeline.h"
int lb_stub_pipeline(void);
int lb_stub_pipeline(void) { return 0; }
