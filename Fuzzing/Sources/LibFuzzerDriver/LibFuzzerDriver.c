// Declarations only (LibFuzzerDriver.h); compiler-rt provides the driver.
