import FamilySyncCLI

// The two tools that read and draw QR codes, in a binary of their own: only
// they load libzbar (and with it X11, D-Bus, V4L), libZXing, libqrencode,
// libpng and libjpeg, so the other four start without those.
MultiCall.main(program: "family-sync-qr", [
    .init(PairQRCommand.spec, PairQRCommand.run),
    .init(PairScanCommand.spec, PairScanCommand.run),
])
