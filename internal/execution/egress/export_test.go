package egress

// NormalHost is the host form the proxy matches (urlnorm.Host), for the
// black-box fuzz test (FuzzParseTarget: every parsed host is in it).
var NormalHost = normalHost
