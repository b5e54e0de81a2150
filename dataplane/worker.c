/* stub */
int lb_stub_worker(void);
int lb_stub_worker(void) { return 0; }
