-- wrk script of bench/nginx.sh and bench/ab.sh: cycle through the paths of
-- the file given after "--", one per line, from a random start per thread.
local paths = {}
local i = 0
init = function(args)
  for line in io.lines(args[1]) do paths[#paths + 1] = line end
  i = math.random(#paths) - 1
end
request = function()
  i = i % #paths + 1
  return wrk.format(nil, paths[i])
end
