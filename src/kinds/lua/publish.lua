-- The release message, for waiters: sharded (SPUBLISH, heard on the
-- channel's slot only) on a cluster, PUBLISH elsewhere. A waiter tells the
-- two apart as this does, with CLUSTER KEYSLOT: a server without cluster
-- support, or a user not allowed to ask, answers an error, and both sides
-- fall back to PUBLISH. Through pcall: a message is not worth failing a
-- release for.

local function publish(channel, message)
  local cluster = type(redis.pcall('CLUSTER', 'KEYSLOT', channel)) == 'number'
  redis.pcall(cluster and 'SPUBLISH' or 'PUBLISH', channel, message)
end
