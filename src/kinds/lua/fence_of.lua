-- The fence stored in a string key, by fence_parse(). A key of another
-- type makes GET raise WRONGTYPE.

local function fence_of(key)
  return fence_parse(redis.call('GET', key), key)
end
