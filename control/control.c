/* stub */
int lb_stub_control(void);
int lb_stub_control(void) { return 0; }
