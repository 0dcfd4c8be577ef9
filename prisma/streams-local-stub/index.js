// Lazarus never runs `prisma dev`, the only command that loads this package; the real one needs Node 22 while
// Lazarus supports Node 20.19+ (README: Requirements).
exports.startLocalDurableStreamsServer = async function startLocalDurableStreamsServer() {
  throw new Error('prisma dev is not available in Lazarus: @prisma/streams-local is replaced (see package.json overrides)');
};
