package butler

// ButlerConfigName is the only name a ButlerConfig may have: it is a platform singleton. The
// validation, the quota Ledger and the controllers all read it from here.
const ButlerConfigName = "butler"
