/* stub */
int lb_stub_port(void);
int lb_stub_port(void) { return 0; }
