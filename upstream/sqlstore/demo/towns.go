package demo

// town is a real Australian or New Zealand place with its approximate
// coordinates. Suburb, Area and Region are what a property there carries.
type town struct {
	Suburb, Area, Region string
	Lat, Long            float64
	// Rural marks towns where farms, vineyards and lifestyle blocks are
	// common; commercial and residential listings appear everywhere.
	Rural bool
}

// auTowns are Australian places. Coordinates are approximate (town centre).
var auTowns = []town{
	{"Bondi", "Eastern Suburbs", "New South Wales", -33.8915, 151.2767, false},
	{"Manly", "Northern Beaches", "New South Wales", -33.7969, 151.2840, false},
	{"Parramatta", "Western Sydney", "New South Wales", -33.8150, 151.0011, false},
	{"Newcastle", "Hunter", "New South Wales", -32.9283, 151.7817, false},
	{"Wollongong", "Illawarra", "New South Wales", -34.4278, 150.8931, false},
	{"Byron Bay", "Northern Rivers", "New South Wales", -28.6474, 153.6020, true},
	{"Orange", "Central West", "New South Wales", -33.2835, 149.1013, true},
	{"Pokolbin", "Hunter Valley", "New South Wales", -32.7667, 151.2833, true},
	{"Fitzroy", "Inner Melbourne", "Victoria", -37.7984, 144.9780, false},
	{"St Kilda", "Port Phillip", "Victoria", -37.8676, 144.9801, false},
	{"Geelong", "Barwon", "Victoria", -38.1499, 144.3617, false},
	{"Ballarat", "Central Highlands", "Victoria", -37.5622, 143.8503, true},
	{"Bendigo", "Loddon", "Victoria", -36.7570, 144.2794, true},
	{"Healesville", "Yarra Valley", "Victoria", -37.6536, 145.5170, true},
	{"New Farm", "Brisbane", "Queensland", -27.4679, 153.0516, false},
	{"Surfers Paradise", "Gold Coast", "Queensland", -28.0023, 153.4145, false},
	{"Noosa Heads", "Sunshine Coast", "Queensland", -26.3945, 153.0906, false},
	{"Toowoomba", "Darling Downs", "Queensland", -27.5598, 151.9507, true},
	{"Cairns", "Far North Queensland", "Queensland", -16.9186, 145.7781, false},
	{"Townsville", "North Queensland", "Queensland", -19.2590, 146.8169, false},
	{"Fremantle", "Perth", "Western Australia", -32.0569, 115.7439, false},
	{"Margaret River", "South West", "Western Australia", -33.9536, 115.0739, true},
	{"Broome", "Kimberley", "Western Australia", -17.9614, 122.2359, false},
	{"Glenelg", "Adelaide", "South Australia", -34.9806, 138.5150, false},
	{"Tanunda", "Barossa Valley", "South Australia", -34.5236, 138.9597, true},
	{"McLaren Vale", "Fleurieu", "South Australia", -35.2190, 138.5430, true},
	{"Sandy Bay", "Hobart", "Tasmania", -42.8960, 147.3250, false},
	{"Launceston", "Northern Tasmania", "Tasmania", -41.4332, 147.1441, true},
	{"Parap", "Darwin", "Northern Territory", -12.4487, 130.8400, false},
	{"Alice Springs", "Central Australia", "Northern Territory", -23.6980, 133.8807, true},
	{"Braddon", "Canberra", "Australian Capital Territory", -35.2750, 149.1339, false},
}

// nzTowns are New Zealand places. Waitangi (Chatham Islands) lies east of the
// antimeridian, so geo searches around it exercise the wrap-around.
var nzTowns = []town{
	{"Ponsonby", "Auckland City", "Auckland", -36.8547, 174.7436, false},
	{"Devonport", "North Shore", "Auckland", -36.8303, 174.7953, false},
	{"Takapuna", "North Shore", "Auckland", -36.7880, 174.7730, false},
	{"Howick", "Manukau", "Auckland", -36.8990, 174.9290, false},
	{"Oneroa", "Waiheke Island", "Auckland", -36.7850, 175.0090, true},
	{"Hamilton East", "Hamilton City", "Waikato", -37.7870, 175.2793, false},
	{"Cambridge", "Waipa", "Waikato", -37.8833, 175.4700, true},
	{"Taupo", "Taupo", "Waikato", -38.6857, 176.0702, true},
	{"Mount Maunganui", "Tauranga", "Bay of Plenty", -37.6390, 176.1850, false},
	{"Rotorua", "Rotorua", "Bay of Plenty", -38.1368, 176.2497, true},
	{"Napier", "Napier City", "Hawke's Bay", -39.4928, 176.9120, false},
	{"Havelock North", "Hastings", "Hawke's Bay", -39.6700, 176.8800, true},
	{"Gisborne", "Gisborne", "Gisborne", -38.6623, 178.0176, true},
	{"New Plymouth", "New Plymouth", "Taranaki", -39.0556, 174.0752, false},
	{"Palmerston North", "Palmerston North City", "Manawatu-Whanganui", -40.3523, 175.6082, false},
	{"Whanganui", "Whanganui", "Manawatu-Whanganui", -39.9301, 175.0479, true},
	{"Thorndon", "Wellington City", "Wellington", -41.2760, 174.7787, false},
	{"Petone", "Lower Hutt", "Wellington", -41.2270, 174.8710, false},
	{"Martinborough", "South Wairarapa", "Wellington", -41.2180, 175.4590, true},
	{"Nelson", "Nelson City", "Nelson", -41.2706, 173.2840, false},
	{"Blenheim", "Marlborough", "Marlborough", -41.5134, 173.9612, true},
	{"Riccarton", "Christchurch City", "Canterbury", -43.5300, 172.5960, false},
	{"Sumner", "Christchurch City", "Canterbury", -43.5690, 172.7590, false},
	{"Rangiora", "Waimakariri", "Canterbury", -43.3040, 172.5960, true},
	{"Timaru", "Timaru", "Canterbury", -44.3960, 171.2540, true},
	{"Queenstown", "Queenstown-Lakes", "Otago", -45.0312, 168.6626, false},
	{"Wanaka", "Queenstown-Lakes", "Otago", -44.7032, 169.1321, true},
	{"Cromwell", "Central Otago", "Otago", -45.0380, 169.2000, true},
	{"St Clair", "Dunedin City", "Otago", -45.9100, 170.4890, false},
	{"Invercargill", "Invercargill City", "Southland", -46.4132, 168.3538, true},
	{"Whangarei", "Whangarei", "Northland", -35.7251, 174.3237, false},
	{"Kerikeri", "Far North", "Northland", -35.2268, 173.9474, true},
	{"Waitangi", "Chatham Islands", "Chatham Islands", -43.9535, -176.5597, true},
}

var auStreets = []string{
	"Beach Road", "High Street", "Victoria Street", "George Street", "Church Street",
	"Park Avenue", "Station Street", "Hill Street", "Kings Road", "Marine Parade",
	"Ocean View Road", "Wattle Street", "Banksia Avenue", "Bridge Road", "Railway Parade",
	"Queen Street", "Elizabeth Street", "Acacia Court", "Jacaranda Drive", "Main Road",
}

var nzStreets = []string{
	"Beach Road", "High Street", "Victoria Street", "Queen Street", "Church Street",
	"Kowhai Road", "Rimu Street", "Totara Avenue", "Pohutukawa Drive", "Manuka Lane",
	"Marine Parade", "Hill Road", "Station Road", "Kauri Crescent", "Bridge Street",
	"Seaview Road", "Tui Street", "Main Road", "Riverside Drive", "Kings Road",
}

var firstNames = []string{
	"Olivia", "Liam", "Charlotte", "Noah", "Amelia", "Jack", "Isla", "Oliver",
	"Mia", "William", "Ava", "Thomas", "Grace", "James", "Chloe", "Lucas",
	"Ruby", "Henry", "Sophie", "Leo", "Aroha", "Tane", "Mere", "Wiremu",
}

var lastNames = []string{
	"Brown", "Wilson", "Taylor", "Williams", "Jones", "Martin", "Anderson", "Thompson",
	"Nguyen", "Walker", "Harris", "Kelly", "Campbell", "Mitchell", "O'Brien", "Robinson",
	"Ngata", "Parata", "Te Rangi", "McDonald", "Clarke", "Patel", "Wright", "Chen",
}

// agentPrefixNames are always the first agents of a tenant and country: they
// share prefixes, so a partial name search ("Jane Smith") finds several.
var agentPrefixNames = []string{"Jane Smith", "Jane Smithson", "Janet Smith"}
